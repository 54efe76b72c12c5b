// What `Custom::CellEndpointServiceName` passes and answers: shared by the construct (CellLink,
// cell-links.ts) and its handler (endpoint-lookup-handler.ts), without the handler's AWS SDK.

/** The resource's properties, set by CellLink. */
export interface LookupProperties {
  readonly CellId: string;
  /** The cell's reader role, in the cell's account. */
  readonly RoleArn: string;
  /** The cell's region, where the parameter is. */
  readonly Region: string;
  readonly ParameterName: string;
  /** endpointServiceFingerprint of the cell: a new one re-reads the name (a new physical id). */
  readonly Fingerprint?: string;
}

/** The attribute the router stacks read (`Fn::GetAtt [<lookup>, Parameter.Value]`). */
export const SERVICE_NAME_ATTRIBUTE = 'Parameter.Value';

/** `<cell>:<parameter>[:<fingerprint>]`: a new fingerprint is a new id, so the name is read again. */
export function lookupPhysicalId(props: Pick<LookupProperties, 'CellId' | 'ParameterName' | 'Fingerprint'>): string {
  return `${props.CellId}:${props.ParameterName}${props.Fingerprint ? `:${props.Fingerprint}` : ''}`;
}
