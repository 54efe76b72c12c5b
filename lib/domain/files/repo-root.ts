import { packageRoot } from './package-root';

/**
 * This repository's root (or the installed package's): the images' sources and Dockerfiles and the
 * bin/ entry points live under it. Found from this file, so it is the same whether the caller runs
 * from its TypeScript source or compiled under dist. Not in the lib/domain/files barrel: it walks the
 * file system when loaded, and the bundled runtime entry points (the router agent) must not carry it.
 */
export const REPO_ROOT = packageRoot(__dirname);
