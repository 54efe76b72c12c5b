import { collapseSdkWarnings, processIo, runCli } from '../lib/cli';

collapseSdkWarnings(processIo.err);
runCli(process.argv.slice(2), processIo).then((code) => {
  process.exitCode = code;
});
