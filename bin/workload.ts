/**
 * The reference workload (container entry point). Configuration from the environment (contract 1):
 *   CELL_ID, ZONE_ID (named in x-zone), PORT=8080, HEALTH_CHECK_PATH=/healthz, PARTITION_KEY=header:x-tenant-id, BUCKET_COUNT=16384
 *   DB_HOST, DB_PORT=5432, DB_NAME, and DB_SECRET_ARN (AWS: read at connect time) or DB_USER + DB_PASSWORD
 *   QUEUE_URL (SQS) or QUEUE_KIND=postgres (local fleet); WORKLOAD_TEST_FAULTS=1 enables fault hooks (tests only)
 * Exit code 2: a configuration error, which restarting the container does not fix.
 * SIGTERM: stops taking connections, finishes requests in flight, stops the consumer, exits 0.
 */
import { startWorkload, WorkloadConfigError, workloadConfigFromEnv } from '../lib/runtime/workload';

async function main(): Promise<void> {
  let config;
  try {
    config = workloadConfigFromEnv(process.env);
  } catch (error) {
    if (error instanceof WorkloadConfigError) {
      process.stderr.write(`workload: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const running = await startWorkload(config, { log: (line) => process.stdout.write(`${line}\n`) });
  running.ready.catch(() => process.exit(1));
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: Error) => {
  process.stderr.write(`workload: ${error.stack ?? error.message}\n`);
  process.exit(1);
});
