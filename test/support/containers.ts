import * as path from 'path';
import { imageDockerfile, ImageName } from '../../lib/runtime/images';
import { REPO_ROOT } from './fleet';

/** The image tests build and run images with the code `cellctl fleet local --images` uses (lib/runtime/images/podman.ts), on stand-in base images. */
export * from '../../lib/runtime/images/podman';

/** The Dockerfile path of a repository image, for messages. */
export const dockerfileOf = (name: ImageName) => path.join(REPO_ROOT, imageDockerfile(name));
