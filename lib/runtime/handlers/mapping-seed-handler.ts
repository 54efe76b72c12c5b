// The Lambda handler behind `MappingSeed` (mapping-bucket.ts): writes one object of a new mapping
// bucket with `If-None-Match: *`, so an object that exists already (an operator's publish) is never
// overwritten. Bundled at synth (esbuild, NodejsFunction) together with this project's own
// `@aws-sdk/client-s3`, so the conditional write does not depend on the SDK the Lambda runtime ships:
// an SDK that does not know `IfNoneMatch` drops the member and writes unconditionally.
//
// It answers CloudFormation itself, on every path: a custom resource that never answers holds the
// stack for its ServiceTimeout (the construct sets one; CloudFormation's default is an hour).
//
// Documentation relied on:
// - S3 conditional writes: with `If-None-Match: *` S3 answers 412 PreconditionFailed when the key
//   exists, and 409 ConditionalRequestConflict when a concurrent write to the key is in progress
//   (retry): https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
// - The response to CloudFormation and the retry while IAM propagates: custom-resource-handler.ts.
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  accessDeniedDeadline,
  answerCloudFormation,
  CustomResourceEvent,
  CustomResourceResponse,
  describeError,
  HandlerContext,
  RetryOptions,
  withinBudget,
  withRetries,
} from './custom-resource-handler';

export { responseBody, sendResponse } from './custom-resource-handler';

/** What the custom resource passes (`Custom::MappingSeed` properties). */
export interface SeedProperties {
  readonly Bucket: string;
  readonly Key: string;
  /** The document written when the key does not exist yet. */
  readonly Body: string;
  readonly ContentType?: string;
  /**
   * For a router group's pointer: the prefix of the other groups' pointers (`groups/`). When any
   * exists, the new pointer gets the document of the lowest version among them (the version every
   * existing group has reached) instead of `Body`, so a group added to a fleet that has published
   * since its first deploy starts on the mapping in force, not on the fleet's version 1.
   */
  readonly Follow?: string;
}

export type SeedEvent = CustomResourceEvent<SeedProperties>;
export type SeedContext = HandlerContext;

/**
 * `written`: the key was absent and now holds `Body`; `followed`: it was absent and now holds the
 * document in force in the other groups (`Follow`); `exists`: S3 answered 412, the key is left alone.
 */
export type SeedOutcome = 'written' | 'followed' | 'exists';

export type SeedResponse = CustomResourceResponse<{ readonly Outcome: SeedOutcome | 'none'; readonly Version?: number }>;

/** 409 ConditionalRequestConflict and 403 AccessDenied are retried (see RetryOptions). */
export type SeedOptions = RetryOptions;

/**
 * The document in force in the other groups: of the pointers under `prefix` other than `key`, the
 * one with the lowest version (every existing group has reached it; a publish under way has moved
 * only some groups further). Undefined when there is none yet (a first deploy).
 */
export async function documentInForce(
  s3: S3Client,
  bucket: string,
  prefix: string,
  key: string,
  signal: AbortSignal | undefined,
  deniedUntil: number,
  options: SeedOptions = {},
): Promise<{ text: string; version: number } | undefined> {
  // `<prefix><group>/mapping.json`: a group's pointer (groupKey in lib/adapters/mapping-store), nothing else under the prefix.
  const pointer = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^/]+/mapping\\.json$`);
  const pointers: string[] = [];
  let token: string | undefined;
  do {
    const page = await withRetries(
      () => s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: signal }),
      deniedUntil,
      signal,
      options,
    );
    for (const o of page.Contents ?? []) if (o.Key && o.Key !== key && pointer.test(o.Key)) pointers.push(o.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  let lowest: { text: string; version: number } | undefined;
  for (const found of pointers) {
    const response = await withRetries(
      () => s3.send(new GetObjectCommand({ Bucket: bucket, Key: found }), { abortSignal: signal }),
      deniedUntil,
      signal,
      options,
    );
    const text = await response.Body!.transformToString();
    let version: unknown;
    try {
      version = (JSON.parse(text) as { version?: unknown }).version;
    } catch {
      version = undefined;
    }
    if (typeof version !== 'number' || !Number.isInteger(version) || version < 1)
      throw new Error(`s3://${bucket}/${found} holds no mapping version; fix it with \`cellctl mapping publish\``);
    if (!lowest || version < lowest.version) lowest = { text, version };
  }
  return lowest;
}

/** `If-None-Match: *` write of one key; 412 (the key exists) is an answer, not an error. */
export async function seedObject(s3: S3Client, props: SeedProperties, signal?: AbortSignal, options: SeedOptions = {}): Promise<SeedOutcome> {
  return (await seedObjectFollowing(s3, props, signal, options)).outcome;
}

/** As seedObject, saying which version a followed pointer got. */
export async function seedObjectFollowing(
  s3: S3Client,
  props: SeedProperties,
  signal?: AbortSignal,
  options: SeedOptions = {},
): Promise<{ outcome: SeedOutcome; version?: number }> {
  const deniedUntil = accessDeniedDeadline(options);
  const inForce = props.Follow ? await documentInForce(s3, props.Bucket, props.Follow, props.Key, signal, deniedUntil, options) : undefined;
  try {
    await withRetries(
      () =>
        s3.send(
          new PutObjectCommand({
            Bucket: props.Bucket,
            Key: props.Key,
            Body: inForce?.text ?? props.Body,
            ContentType: props.ContentType ?? 'application/json',
            IfNoneMatch: '*',
          }),
          { abortSignal: signal },
        ),
      deniedUntil,
      signal,
      options,
    );
    return inForce ? { outcome: 'followed', version: inForce.version } : { outcome: 'written' };
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.$metadata?.httpStatusCode === 412 || e.name === 'PreconditionFailed') return { outcome: 'exists' };
    throw err;
  }
}

/** What the resource's physical id is: the key on Create (also when the create fails: a rollback's Delete then has an id), kept after. */
function physicalId(event: SeedEvent): string {
  return event.PhysicalResourceId ?? event.ResourceProperties?.Key ?? event.LogicalResourceId;
}

/**
 * Create: conditional write of the key (a group pointer with `Follow` gets the document in force in
 * the other groups, when there are any). Update: nothing (later documents are the operator's, through
 * `cellctl mapping publish`; the same physical id, so no replacement). Delete: nothing (the bucket and
 * its documents are retained). Never throws: every outcome becomes the response for CloudFormation.
 */
export async function seedResponse(event: SeedEvent, context: SeedContext, s3: S3Client, options: SeedOptions = {}): Promise<SeedResponse> {
  const base = {
    PhysicalResourceId: physicalId(event),
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  };
  if (event.RequestType !== 'Create') return { ...base, Status: 'SUCCESS', Data: { Outcome: 'none' } };
  const properties = event.ResourceProperties ?? {};
  const { Bucket, Key, Body, ContentType, Follow } = properties;
  const missing = (['Bucket', 'Key', 'Body'] as const).filter((name) => typeof properties[name] !== 'string' || properties[name] === '');
  if (missing.length > 0) {
    return {
      ...base,
      Status: 'FAILED',
      Reason: `Custom::MappingSeed ${event.LogicalResourceId}: missing properties ${missing.join(', ')} (MappingSeed in lib/constructs/router/mapping-bucket.ts sets them)`,
    };
  }
  // Answer before the Lambda is stopped: a hung S3 call is aborted and reported.
  return withinBudget(context, options, async (signal, budget): Promise<SeedResponse> => {
    try {
      const { outcome, version } = await seedObjectFollowing(
        s3,
        { Bucket: Bucket!, Key: Key!, Body: Body!, ContentType, ...(Follow ? { Follow } : {}) },
        signal,
        options,
      );
      log({ requestType: event.RequestType, logicalId: event.LogicalResourceId, bucket: Bucket, key: Key, outcome, ...(version ? { version } : {}) });
      return { ...base, Status: 'SUCCESS', Data: { Outcome: outcome, ...(version ? { Version: version } : {}) } };
    } catch (err) {
      const what = describeError(err, signal, budget, 'S3');
      log({ requestType: event.RequestType, logicalId: event.LogicalResourceId, bucket: Bucket, key: Key, error: what });
      return {
        ...base,
        Status: 'FAILED',
        Reason: `Seeding s3://${Bucket}/${Key} failed: ${what}. The stack's custom resource role must be allowed s3:PutObject on the key${Follow ? `, s3:ListBucket on ${Follow} and s3:GetObject on its pointers` : ''} (MappingSeed, mapping-bucket.ts).`,
      };
    }
  });
}

function log(fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ seed: fields }));
}

let client: S3Client | undefined;

/** The Lambda entry point (`index.handler` in the bundle). */
export async function handler(event: SeedEvent, context: SeedContext): Promise<void> {
  // seedResponse turns every S3 outcome into a response; a malformed event is answered FAILED.
  await answerCloudFormation(event, 'Custom::MappingSeed', physicalId(event), () => {
    client ??= new S3Client({});
    return seedResponse(event, context, client);
  });
}
