// What the router stacks' bundled custom-resource handlers (mapping-seed-handler.ts,
// endpoint-lookup-handler.ts) share: the request and response shapes, the retry of a refused call
// while IAM propagates, the time budget, and the answer PUT to CloudFormation. Bundled into each
// handler by esbuild; imports nothing from aws-cdk-lib or the AWS SDK.
//
// Documentation relied on:
// - The response (Status, Reason, PhysicalResourceId, StackId, RequestId, LogicalResourceId, Data) is
//   a JSON body of at most 4096 bytes PUT to the presigned ResponseURL; a changed PhysicalResourceId
//   on update means replacement (CloudFormation then deletes the old one):
//   https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html
// - IAM changes (a new role, its trust, its policy) take a while to be seen everywhere: IAM User
//   Guide, "Troubleshoot IAM", "Changes that I make are not always immediately visible".

/** The part of a CloudFormation custom resource request a handler reads. */
export interface CustomResourceEvent<P> {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  /** Absent on Create. */
  readonly PhysicalResourceId?: string;
  readonly ResourceProperties: Partial<P> & { readonly ServiceToken?: string };
}

/** The part of the Lambda context a handler reads. */
export interface HandlerContext {
  getRemainingTimeInMillis(): number;
}

export interface CustomResourceResponse<D> {
  readonly Status: 'SUCCESS' | 'FAILED';
  readonly Reason?: string;
  readonly PhysicalResourceId: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly Data?: D;
}

export interface RetryOptions {
  /** Attempts on 409 ConditionalRequestConflict (a concurrent write), with `retryDelayMs × attempt` between. */
  readonly conflictAttempts?: number;
  /**
   * How long a refused call (403 AccessDenied, AccessDeniedException) is retried: on a first deploy
   * the role, its trust and its policies were made seconds before. Safe to repeat: every attempt is
   * the same read or conditional write.
   * @default 60000
   */
  readonly accessDeniedMs?: number;
  /** First delay between attempts, growing by itself each attempt, at most 10 s. @default 1000 */
  readonly retryDelayMs?: number;
  /** Time kept back from the Lambda's remaining time to answer CloudFormation before the function is stopped. @default 10000 */
  readonly reserveMs?: number;
  /** The clock the retry deadline is measured on. @default Date.now */
  readonly now?: () => number;
  /** How the handler waits between attempts. @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

type AwsError = { name?: string; $metadata?: { httpStatusCode?: number } };

/**
 * IAM said no: S3 and STS answer 403 AccessDenied, SSM (JSON protocol) 400 AccessDeniedException; a
 * 403 without an error code (an S3 HEAD) is taken as the same. Other 403s that name themselves (STS
 * RegionDisabledException, S3 SignatureDoesNotMatch) are not refusals that time cures.
 */
export function isAccessDenied(err: unknown): boolean {
  const e = err as AwsError;
  if (e.name === 'AccessDenied' || e.name === 'AccessDeniedException') return true;
  return e.$metadata?.httpStatusCode === 403 && (e.name === undefined || e.name === 'Forbidden' || e.name === '403' || e.name === 'UnknownError');
}

/** When a retry of refused calls started now gives up. */
export function accessDeniedDeadline(options: RetryOptions): number {
  return (options.now ?? Date.now)() + (options.accessDeniedMs ?? 60_000);
}

/**
 * Runs `call`, retrying 409 ConditionalRequestConflict (`conflictAttempts` times) and refused calls
 * (until `deniedUntil`: IAM propagation on a first deploy, or after a role's policy changed). Any
 * other error, or a refusal past the deadline, is thrown.
 */
export async function withRetries<T>(
  call: () => Promise<T>,
  deniedUntil: number,
  signal: AbortSignal | undefined,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.conflictAttempts ?? 5;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const e = err as AwsError;
      const delay = Math.min((options.retryDelayMs ?? 1000) * attempt, 10_000);
      const conflict = (e.$metadata?.httpStatusCode === 409 || e.name === 'ConditionalRequestConflict') && attempt < attempts;
      const denied = isAccessDenied(err) && now() + delay < deniedUntil;
      if ((conflict || denied) && !signal?.aborted) {
        await sleep(delay);
        continue;
      }
      throw err;
    }
  }
}

/**
 * Runs `work` with a signal that aborts `reserveMs` before the Lambda would be stopped (at least
 * 1 s from now), so a hung call is reported to CloudFormation instead of holding the stack.
 */
export async function withinBudget<T>(
  context: HandlerContext,
  options: RetryOptions,
  work: (signal: AbortSignal, budgetMs: number) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const budget = Math.max(1000, context.getRemainingTimeInMillis() - (options.reserveMs ?? 10_000));
  const timer = setTimeout(() => controller.abort(), budget);
  try {
    return await work(controller.signal, budget);
  } finally {
    clearTimeout(timer);
  }
}

/** `Name (HTTP 403): message` of an SDK error, or what aborted it. */
export function describeError(err: unknown, signal: AbortSignal, budgetMs: number, service: string): string {
  if (signal.aborted) return `no answer from ${service} within ${budgetMs} ms`;
  const e = err as Error & AwsError;
  return `${e.name ?? 'Error'}${e.$metadata?.httpStatusCode ? ` (HTTP ${e.$metadata.httpStatusCode})` : ''}: ${e.message}`;
}

/** The body CloudFormation accepts: at most 4096 bytes, so a long reason is cut. */
export function responseBody(response: CustomResourceResponse<unknown>): string {
  const body = JSON.stringify(response);
  if (Buffer.byteLength(body) <= 4096) return body;
  const over = Buffer.byteLength(body) - 4096;
  const reason = response.Reason ?? '';
  return JSON.stringify({ ...response, Reason: `${reason.slice(0, Math.max(0, reason.length - over - 16))} …(cut)` });
}

/**
 * The body of a Lambda entry point: `respond` turns every AWS outcome into a response; anything it
 * throws (a malformed event) is answered FAILED, naming `resourceType`, with `physicalId`. The answer
 * is always sent (`sendResponse`).
 */
export async function answerCloudFormation(
  event: CustomResourceEvent<unknown>,
  resourceType: string,
  physicalId: string,
  respond: () => Promise<CustomResourceResponse<unknown>>,
): Promise<void> {
  let response: CustomResourceResponse<unknown>;
  try {
    response = await respond();
  } catch (err) {
    response = {
      Status: 'FAILED',
      Reason: `${resourceType}: ${(err as Error).message}`,
      PhysicalResourceId: physicalId,
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
    };
  }
  await sendResponse(event.ResponseURL, response);
}

/** PUTs the response to the presigned URL, retrying network errors and 5xx a few times. */
export async function sendResponse(url: string, response: CustomResourceResponse<unknown>, attempts = 4, retryDelayMs = 1000): Promise<void> {
  const body = responseBody(response);
  let last = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      // The presigned URL is signed without a content type.
      const res = await fetch(url, { method: 'PUT', body, headers: { 'content-type': '' }, signal: AbortSignal.timeout(10_000) });
      if (res.ok) return;
      last = `HTTP ${res.status}`;
      if (res.status < 500) break;
    } catch (err) {
      last = (err as Error).message;
    }
    if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, retryDelayMs * attempt));
  }
  // Thrown, the invocation fails and Lambda retries it (CloudFormation invokes asynchronously); the
  // handlers' work is idempotent, so a retry answers the same.
  throw new Error(`could not answer CloudFormation (${last})`);
}
