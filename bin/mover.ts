/**
 * The mover task of a cell (container entry point, images/mover): performs one step of a move
 * inside the cell and exits. See lib/operations/moves/aws-task.ts for the environment and the exit codes.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
// By module, not through lib/operations/moves' index: the image bundles only what this file reaches.
import { runMoverTask } from '../lib/operations/moves/aws-task';
import { systemClock } from '../lib/domain/moves/types';

const secrets = new SecretsManagerClient({});
runMoverTask(process.env, {
  s3: (region) => new S3Client({ region, forcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true' }),
  secret: async (arn) => {
    const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: arn }));
    if (!SecretString) throw new Error(`${arn}: the secret has no SecretString`);
    return SecretString;
  },
  clock: systemClock,
}).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`mover: ${error.stack ?? error.message}\n`);
    process.exit(2);
  },
);
