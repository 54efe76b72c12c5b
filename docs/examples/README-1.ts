import { App } from 'aws-cdk-lib';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { addFleet, addPipeline } from './lib/app';
import { loadFleet } from './lib/domain/fleet';

// The fleet file, validated: every problem is listed before any construct is built.
const fleet = loadFleet('cells.config.ts');
const app = new App();

if (fleet.pipeline) {
  // The pipeline stack (tooling account): cell waves, then the routers region by region.
  addPipeline(app, fleet);
} else {
  // Without a pipeline: per region a RouterStack and its two RouterGroupsStacks, one CellStack per
  // cell. Both add the AwsSolutions and CellIsolation gates and the AWS limit checks.
  const { cells } = addFleet(app, fleet);
  // Each cell's building blocks are public (network, entry, compute, data, queues, alarms, ...):
  // here on-call subscribes to every cell's alarm topic.
  for (const stack of cells) stack.cell.alarms.topic.addSubscription(new EmailSubscription('oncall@example.com'));
}
app.synth();
