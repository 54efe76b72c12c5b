import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import { Construct } from 'constructs';
import { imageContext, ImageName } from '../../runtime/images/context';

/**
 * A CDK image asset of one of this repository's images, built from its own context
 * (`imageContext`): the asset hash is the hash of exactly what goes into the image. `rendered`: the
 * files an image renders at synth (router-haproxy: its HAProxy configuration).
 */
export function repositoryImageAsset(
  scope: Construct,
  id: string,
  name: ImageName,
  rendered?: Readonly<Record<string, string>>,
): ecrAssets.DockerImageAsset {
  return new ecrAssets.DockerImageAsset(scope, id, { directory: imageContext(name, { rendered }) });
}
