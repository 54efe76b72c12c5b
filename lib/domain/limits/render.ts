/** Lengths that pseudo parameters render to when a document is sized: the commercial partition, otherwise the longest realistic value. */
const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::AccountId': '123456789012',
  'AWS::Region': 'ap-southeast-5',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'x'.repeat(64),
};

/** What a Ref or GetAtt of a resource renders to: an ARN-length placeholder. */
const RESOURCE_VALUE = 'x'.repeat(80);

/**
 * Renders intrinsic functions the way CloudFormation would, with realistic lengths: Fn::Join of its
 * parts, pseudo parameters by their longest value, a Ref or GetAtt of a resource by an ARN-length
 * placeholder (80 characters). So a document is sized as deployed, not as written in the template.
 */
export function renderForSize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renderForSize);
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === 'Ref') return PSEUDO[String(o.Ref)] ?? RESOURCE_VALUE;
    if (keys.length === 1 && keys[0] === 'Fn::GetAtt') return RESOURCE_VALUE;
    if (keys.length === 1 && keys[0] === 'Fn::Join') {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return (Array.isArray(parts) ? parts : [parts]).map((p) => String(renderForSize(p))).join(sep);
    }
    if (keys.length === 1 && keys[0] === 'Fn::Sub')
      return String(Array.isArray(o['Fn::Sub']) ? o['Fn::Sub'][0] : o['Fn::Sub']).replace(/\$\{[^}]+\}/g, 'x'.repeat(40));
    return Object.fromEntries(keys.map((k) => [k, renderForSize(o[k])]));
  }
  return value;
}

/** The size a policy document counts against its limit: rendered JSON without whitespace. */
export function policySize(document: unknown): number {
  return JSON.stringify(renderForSize(document)).length;
}

/**
 * A name as deployed when it is made of literals and pseudo parameters only; undefined when it
 * contains a resource's Ref or GetAtt (CloudFormation generates those names within the limits).
 */
export function literalName(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  if ('Ref' in o) return PSEUDO[String(o.Ref)];
  if ('Fn::Join' in o) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    const rendered = (Array.isArray(parts) ? parts : [parts]).map(literalName);
    return rendered.every((p): p is string => p !== undefined) ? rendered.join(sep) : undefined;
  }
  return undefined;
}
