import { processIo, runCli } from '../lib/cli';

runCli(process.argv.slice(2), processIo).then((code) => {
  process.exitCode = code;
});
