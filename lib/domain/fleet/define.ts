import { FleetInput } from './types';

/**
 * Typed identity for `cells.config.ts`: gives editors the schema and keeps the file declarative.
 * Validation happens when the fleet is loaded (`loadFleet`), where the account file is known too.
 */
export function defineFleet(input: FleetInput): FleetInput {
  return input;
}
