/**
 * The expression of CodePipeline's `DeploymentWindow` rule (CodePipeline User Guide, rule
 * reference "DeploymentWindow",
 * https://docs.aws.amazon.com/codepipeline/latest/userguide/rule-reference-DeploymentWindow.html):
 * a bare Quartz-style expression of six required fields and an optional year, separated by
 * spaces, **seconds first**; not an EventBridge `cron(...)`. The times it matches are the times
 * deployment is allowed, so a window from 08:00 to 16:59 Monday to Thursday is
 * `* * 8-16 ? * MON-THU *`.
 *
 * | field | values | special characters |
 * |---|---|---|
 * | seconds | (none) | `*` |
 * | minutes | 0-59 | `, - * /` |
 * | hours | 0-23 | `, - * /` |
 * | day-of-month | 1-31 | `, - * ? / L W` |
 * | month | 1-12 or JAN-DEC | `, - * /` |
 * | day-of-week | 1-7 or SUN-SAT | `, - * ? / L #` |
 * | year (optional) | 1970-2199 | `, - * /` |
 */
export const DEPLOYMENT_WINDOW_EXAMPLE = '* * 8-16 ? * MON-THU *';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly chars: RegExp;
  readonly names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minutes', min: 0, max: 59, chars: /^[0-9,\-*/]+$/ },
  { name: 'hours', min: 0, max: 23, chars: /^[0-9,\-*/]+$/ },
  { name: 'day-of-month', min: 1, max: 31, chars: /^([0-9,\-*/?W]+|L(-[0-9]+)?|LW)$/ },
  { name: 'month', min: 1, max: 12, chars: /^[0-9A-Z,\-*/]+$/, names: MONTHS },
  { name: 'day-of-week', min: 1, max: 7, chars: /^[0-9A-Z,\-*/?L#]+$/, names: DAYS },
  { name: 'year', min: 1970, max: 2199, chars: /^[0-9,\-*/]+$/ },
];

function fieldProblem(spec: FieldSpec, value: string): string | undefined {
  const upper = value.toUpperCase();
  if (!spec.chars.test(upper)) return `${spec.name} \`${value}\` has characters the ${spec.name} field does not allow`;
  for (const [, before, token] of upper.matchAll(/(^|[,\-/#])([^,\-/#]*)/g)) {
    if (token === '' || token === '*' || token === '?' || token === 'L' || token === 'W' || token === 'LW' || /^\d+[LW]$/.test(token)) continue;
    if (spec.names && /^[A-Z]{3}$/.test(token)) {
      if (!spec.names.includes(token)) return `${spec.name} \`${value}\`: \`${token}\` is not one of ${spec.names.join(', ')}`;
      continue;
    }
    if (!/^\d+$/.test(token)) return `${spec.name} \`${value}\`: \`${token}\` is not a number`;
    const n = Number(token);
    // After '/' comes an increment and after '#' an occurrence: positive, not a value of the field.
    if (before === '/' || before === '#') {
      if (n < 1) return `${spec.name} \`${value}\`: ${before}${n} must be at least 1`;
      continue;
    }
    if (n < spec.min || n > spec.max) return `${spec.name} \`${value}\`: ${n} is outside ${spec.min}-${spec.max}`;
  }
  return undefined;
}

/**
 * Problems with a DeploymentWindow expression, each saying what to write instead; empty when valid.
 * An EventBridge `cron(...)` gets the equivalent window expression as its fix.
 */
export function deploymentWindowProblems(cron: string): string[] {
  const expected = `a DeploymentWindow expression: 6 fields and an optional year, seconds first, matching the times deployment is allowed, e.g. \`${DEPLOYMENT_WINDOW_EXAMPLE}\` for 08:00-16:59 Monday to Thursday`;
  const eventBridge = /^\s*cron\((.*)\)\s*$/.exec(cron);
  if (eventBridge) {
    const fields = eventBridge[1].trim().split(/\s+/);
    const hint = fields.length === 6 ? `; for the hours of \`${cron}\` write \`* * ${fields.slice(1).join(' ')}\`` : '';
    return [`\`${cron}\` is an EventBridge cron(...); CodePipeline expects ${expected}${hint}`];
  }
  const fields = cron.trim().split(/\s+/);
  if (fields.length < 6 || fields.length > 7) return [`\`${cron}\` has ${fields.length} field(s); expected ${expected}`];
  const problems: string[] = [];
  if (fields[0] !== '*') problems.push(`seconds \`${fields[0]}\` must be \`*\` (the first field is seconds; minutes come second)`);
  fields.slice(1).forEach((value, i) => {
    const problem = fieldProblem(FIELDS[i], value);
    if (problem) problems.push(problem);
  });
  const [dom, dow] = [fields[3], fields[5]];
  if ((dom === '?') === (dow === '?')) problems.push(`exactly one of day-of-month \`${dom}\` and day-of-week \`${dow}\` must be \`?\``);
  return problems.map((p) => (p.startsWith('`') ? p : `\`${cron}\`: ${p}`));
}
