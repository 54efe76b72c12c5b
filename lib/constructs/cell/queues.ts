import { Duration, Validations } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface CellQueuesProps {
  /** The cell's own key; both queues are encrypted with it. */
  readonly encryptionKey: kms.IKey;
  /**
   * Receives before a message moves to the dead-letter queue.
   * @default 5
   */
  readonly maxReceiveCount?: number;
  /**
   * How long a received message stays invisible to other consumers.
   * @default Duration.minutes(5)
   */
  readonly visibilityTimeout?: Duration;
}

/** The cell's work queue and its dead-letter queue: encrypted with the cell key, TLS only. */
export class CellQueues extends Construct {
  public readonly work: sqs.Queue;
  public readonly deadLetter: sqs.Queue;

  constructor(scope: Construct, id: string, props: CellQueuesProps) {
    super(scope, id);
    const maxReceiveCount = props.maxReceiveCount ?? 5;
    if (!Number.isInteger(maxReceiveCount) || maxReceiveCount < 1 || maxReceiveCount > 1000) {
      throw new Error(`CellQueues: maxReceiveCount ${maxReceiveCount} must be an integer from 1 to 1000`);
    }
    this.deadLetter = new sqs.Queue(this, 'DeadLetter', {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: props.encryptionKey,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.deadLetter).acknowledge({
      id: 'ControlTower::CT.SQS.PR.1',
      reason:
        "This is the work queue's dead-letter queue; its depth pages through the cell's dead-letters alarm, and a dead-letter queue of its own would only hide those messages further.",
    });
    this.work = new sqs.Queue(this, 'Work', {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: props.encryptionKey,
      enforceSSL: true,
      visibilityTimeout: props.visibilityTimeout ?? Duration.minutes(5),
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetter, maxReceiveCount },
    });
  }
}
