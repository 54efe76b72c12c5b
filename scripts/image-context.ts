// Prints the build context directory of one of this repository's images (lib/runtime/images), made or
// reused: `docker build "$(npm run -s image-context -- router-agent)"`. router-haproxy's holds the
// HAProxy configuration rendered for a fleet file's router, as synth renders it:
// `npm run -s image-context -- router-haproxy [cells.config.ts]`.
import { loadFleet } from '../lib/domain/fleet';
import { IMAGE_NAMES, imageContext, isImageName } from '../lib/runtime/images';
import { routerRoutingOf, routerStateFiles, routerTaskConfig } from '../lib/runtime/router/task-config';

const name = process.argv[2] ?? '';
if (!isImageName(name)) {
  process.stderr.write(`image-context: unknown image \`${name}\`; one of ${IMAGE_NAMES.join(', ')}\n`);
  process.exit(2);
}
try {
  const rendered =
    name === 'router-haproxy'
      ? (() => {
          // The tenant-token keys too, as the router stacks render them (an image without them answers 401 to every token).
          const routing = routerRoutingOf(loadFleet(process.argv[3] ?? 'cells.config.ts'));
          return routerStateFiles(routerTaskConfig(routing), routing.partitionKey);
        })()
      : undefined;
  process.stdout.write(`${imageContext(name, { rendered })}\n`);
} catch (error) {
  process.stderr.write(`image-context: ${(error as Error).message}\n`);
  process.exit(1);
}
