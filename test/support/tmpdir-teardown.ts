import { teardown } from './tmpdir';

export default teardown;
