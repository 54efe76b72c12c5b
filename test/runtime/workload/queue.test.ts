import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { PoolClient } from 'pg';
import { sqsWorkQueue, WorkMessage } from '../../../lib/runtime/workload';
import { until } from '../../support/cells';

// SQS has no local implementation on this machine: the client is mocked with responses shaped like
// the real API's. The PostgreSQL queue is tested end to end in server.test.ts (the queue round trip).
const URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/cell-work';

test('SQS: send writes the message; the consumer handles, then deletes; a failure makes it visible again', async () => {
  const sqs = mockClient(SQSClient);
  const message: WorkMessage = { kind: 'item.created', tenantId: 'acme', itemId: 'i-1' };
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm-0' });
  sqs
    .on(ReceiveMessageCommand)
    .resolvesOnce({
      Messages: [
        { MessageId: 'm-1', ReceiptHandle: 'r-1', Body: JSON.stringify(message) },
        { MessageId: 'm-2', ReceiptHandle: 'r-2', Body: JSON.stringify({ ...message, itemId: 'bad' }) },
      ],
    })
    .resolves({ Messages: [] });
  sqs.on(DeleteMessageCommand).resolves({});
  sqs.on(ChangeMessageVisibilityCommand).resolves({});
  const queue = sqsWorkQueue(URL, { client: new SQSClient({ region: 'eu-west-1' }), waitSeconds: 0 });
  await queue.send({} as PoolClient, message);
  expect(sqs.commandCalls(SendMessageCommand)[0].args[0].input).toEqual({ QueueUrl: URL, MessageBody: JSON.stringify(message) });

  const handled: string[] = [];
  queue.start(async (m) => {
    if (m.itemId === 'bad') throw new Error('boom');
    handled.push(m.itemId);
  });
  await until('both messages to be handled', async () => sqs.commandCalls(ChangeMessageVisibilityCommand).length === 1, 60_000);
  await queue.stop();
  expect(handled).toEqual(['i-1']);
  expect(sqs.commandCalls(DeleteMessageCommand).map((c) => c.args[0].input.ReceiptHandle)).toEqual(['r-1']);
  expect(sqs.commandCalls(ChangeMessageVisibilityCommand)[0].args[0].input).toMatchObject({ ReceiptHandle: 'r-2', VisibilityTimeout: 0 });
  sqs.restore();
});
