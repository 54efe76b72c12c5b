import * as path from 'path';
import type { S3Client } from '@aws-sdk/client-s3';
import { Fleet, FleetConfigError, loadFleet } from '../domain/fleet';
import { mappingBucketParameter, routerStackName } from '../domain/names';
import { CliError } from './io';

/** Runs `load`, turning config problems (cells.config.ts, cells.accounts.json) into a CLI error (exit 1). */
export function withConfig<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof FleetConfigError) throw new CliError(error.message);
    throw error;
  }
}

/** Loads the fleet for a command; config problems are a CLI error (exit 1) listing them. */
export function fleetFrom(configPath: string): Fleet {
  return withConfig(() => loadFleet(path.resolve(configPath)));
}

export interface S3Options {
  readonly forcePathStyle?: boolean;
  readonly region?: string;
}

/**
 * An S3 client from the standard SDK configuration (credential chain, AWS_REGION,
 * AWS_ENDPOINT_URL_S3); `fallbackRegion` only when nothing else names one.
 */
export function s3Client(options: S3Options, fallbackRegion: string): S3Client {
  // Loaded here, not at start: the SDK alone takes longer to load than the whole CLI (bench:cli).
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { S3Client } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  const region = options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? fallbackRegion;
  return new S3Client({ region, forcePathStyle: options.forcePathStyle ?? false });
}

/**
 * The mapping bucket of `region`: its name ends with part of its router stack's id (a retried first
 * deploy makes a new one), so the router stack publishes it in an SSM parameter of the region.
 */
export async function mappingBucketOf(fleet: Fleet, region: string): Promise<string> {
  const name = mappingBucketParameter(fleet.app);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
  const { GetParameterCommand, SSMClient } = require('@aws-sdk/client-ssm') as typeof import('@aws-sdk/client-ssm');
  const ssm = new SSMClient({ region });
  try {
    const { Parameter } = await ssm.send(new GetParameterCommand({ Name: name }));
    if (!Parameter?.Value) throw new Error('empty value');
    return Parameter.Value;
  } catch (error) {
    const hint =
      (error as Error).name === 'ParameterNotFound'
        ? `the router stack of ${region} (${routerStackName(fleet.app, region)}) is not deployed yet in account ${fleet.accounts.router}`
        : 'check the credentials (the publisher role may read it) and AWS_REGION';
    throw new CliError(
      `cannot find the mapping bucket of ${region}: SSM ${name} in ${region}: ${(error as Error).name}: ${(error as Error).message}; ${hint}, or pass --bucket NAME`,
    );
  } finally {
    ssm.destroy();
  }
}
