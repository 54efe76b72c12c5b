import { collapseSdkWarnings, invocationName, invokedAs, processIo, runCli } from '../lib/cli';

// The commands cellctl prints say how to run it the way this process was run (`node bin/cellctl.js` in a checkout).
const io = invokedAs(processIo, invocationName(process.argv[1]));
collapseSdkWarnings(io.err);
runCli(process.argv.slice(2), io).then((code) => {
  process.exitCode = code;
});
