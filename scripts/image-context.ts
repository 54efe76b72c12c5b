// Prints the build context directory of one of this repository's images (lib/images), made or
// reused: `docker build "$(npm run -s image-context -- router-agent)"`.
import { IMAGE_NAMES, imageContext, isImageName } from '../lib/images';

const name = process.argv[2] ?? '';
if (!isImageName(name)) {
  process.stderr.write(`image-context: unknown image \`${name}\`; one of ${IMAGE_NAMES.join(', ')}\n`);
  process.exit(2);
}
try {
  process.stdout.write(`${imageContext(name)}\n`);
} catch (error) {
  process.stderr.write(`image-context: ${(error as Error).message}\n`);
  process.exit(1);
}
