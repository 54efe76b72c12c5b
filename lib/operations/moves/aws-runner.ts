import { randomBytes } from 'crypto';
import type { ECSClient } from '@aws-sdk/client-ecs';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { MoverTaskRunner } from './aws-cell';
import { MoverRequest, MoverResult, MoverTaskInfo, taskRequestKey, taskResultKey } from '../../domain/names/move-bucket';
import { Clock, MoveError } from '../../domain/moves/types';
import { statusOf } from '../../adapters/mapping-store/store';

/** One cell as the runner needs it: where its mover runs, and how to reach it. */
export interface MoverCell {
  readonly id: string;
  readonly account: string;
  readonly region: string;
}

export interface EcsMoverRunnerOptions {
  /** Operator credentials, in the move bucket's region. */
  readonly s3: S3Client;
  readonly bucket: string;
  readonly bucketRegion: string;
  readonly cells: Readonly<Record<string, MoverCell>>;
  /** An ECS client in the cell's account and region (credentials of its launcher role). */
  readonly ecs: (cell: MoverCell) => ECSClient | Promise<ECSClient>;
  /** How to run the cell's mover (its SSM parameter, read through the launcher role). */
  readonly taskInfo: (cell: MoverCell) => Promise<MoverTaskInfo>;
  readonly clock: Clock;
  /** @default 5000 */
  readonly pollMs?: number;
  /** A task still running after this is stopped and the step fails (resume runs it again). @default 6 h */
  readonly timeoutMs?: number;
  readonly progress?: (line: string) => void;
  /** Aborted when the operator interrupts `cellctl move`: no task is started after it, a wait ends. */
  readonly signal?: AbortSignal;
}

/** A mover task this runner started and has not seen stop. */
interface RunningTask {
  readonly cell: MoverCell;
  readonly ecs: ECSClient;
  readonly cluster: string;
  readonly taskArn: string;
  readonly op: string;
}

/**
 * Runs a cell's mover task for one request: writes the request to the move bucket
 * (`tasks/<cell account>/<id>/request.json`, If-None-Match), starts the task with ECS RunTask in
 * the cell's account (through its launcher role), polls DescribeTasks until it has stopped, and
 * reads its result (`result.json`). The request goes through S3, not the task's overrides: RunTask
 * allows 8,192 characters of overrides in all (Amazon ECS API Reference, RunTask, `overrides`),
 * and a bucket move's override lists can be longer.
 */
export class EcsMoverRunner implements MoverTaskRunner {
  private readonly running = new Map<string, RunningTask>();
  /** RunTask calls sent and not answered yet. */
  private readonly starting = new Set<Promise<void>>();
  private stopping?: Promise<{ stopped: string[]; failed: string[] }>;

  constructor(private readonly o: EcsMoverRunnerOptions) {}

  /** The tasks started and not yet seen stopped. */
  public get runningTasks(): readonly RunningTask[] {
    return [...this.running.values()];
  }

  /**
   * Stops every mover task this runner started that has not stopped yet (ECS StopTask through the
   * cell's launcher role, which may stop its mover cluster's tasks). Returns the tasks asked to stop;
   * one that could not be stopped is named in `failed`.
   */
  public stopAll(reason: string): Promise<{ stopped: string[]; failed: string[] }> {
    this.stopping ??= (async () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
      const { StopTaskCommand } = require('@aws-sdk/client-ecs') as typeof import('@aws-sdk/client-ecs');
      // A RunTask already sent: its task is stopped too, once ECS has named it.
      await Promise.all([...this.starting]);
      const stopped: string[] = [];
      const failed: string[] = [];
      await Promise.all(
        [...this.running.values()].map(async (t) => {
          try {
            await t.ecs.send(new StopTaskCommand({ cluster: t.cluster, task: t.taskArn, reason: reason.slice(0, 255) }), {
              abortSignal: AbortSignal.timeout(15_000),
            });
            stopped.push(t.taskArn);
          } catch (error) {
            failed.push(`${t.taskArn} (${(error as Error).name}: ${(error as Error).message})`);
          }
        }),
      );
      return { stopped, failed };
    })();
    return this.stopping;
  }

  private interrupted(): MoveError {
    return new MoveError('interrupted (cellctl move was stopped by a signal); `cellctl move resume` continues the move');
  }

  /** Sleeps `ms`, or less when the run is interrupted. */
  private async pause(ms: number): Promise<void> {
    const signal = this.o.signal;
    if (!signal) return this.o.clock.sleep(ms);
    if (signal.aborted) return;
    let onAbort: (() => void) | undefined;
    await Promise.race([
      this.o.clock.sleep(ms),
      new Promise<void>((resolve) => {
        onAbort = resolve;
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }

  private cellOf(id: string): MoverCell {
    const cell = this.o.cells[id];
    if (!cell) throw new MoveError(`cell ${id} is not in the fleet config (cells: ${Object.keys(this.o.cells).join(', ')})`);
    return cell;
  }

  public async run(request: MoverRequest): Promise<unknown> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
    const ecsApi = require('@aws-sdk/client-ecs') as typeof import('@aws-sdk/client-ecs');
    const cell = this.cellOf(request.cell);
    if (this.o.signal?.aborted) throw this.interrupted();
    const stamp = this.o.clock
      .now()
      .toISOString()
      .replace(/[^0-9]/g, '')
      .slice(0, 17);
    const id = `${stamp}-${request.op.toLowerCase()}-${randomBytes(4).toString('hex')}`;
    const requestKey = taskRequestKey(cell.account, id);
    const resultKey = taskResultKey(cell.account, id);
    try {
      await this.o.s3.send(
        new PutObjectCommand({
          Bucket: this.o.bucket,
          Key: requestKey,
          Body: JSON.stringify(request),
          ContentType: 'application/json',
          IfNoneMatch: '*',
        }),
      );
    } catch (error) {
      throw new MoveError(
        `writing the mover request s3://${this.o.bucket}/${requestKey} failed: ${(error as Error).name} ${statusOf(error) ?? ''}: ${(error as Error).message}`,
      );
    }
    const info = await this.o.taskInfo(cell);
    const ecs = await this.o.ecs(cell);
    // No task starts once the command is interrupted; one whose RunTask is under way is waited for by stopAll.
    if (this.o.signal?.aborted) throw this.interrupted();
    let answered!: () => void;
    const starting = new Promise<void>((resolve) => {
      answered = resolve;
    });
    this.starting.add(starting);
    let started;
    try {
      started = await ecs.send(
        new ecsApi.RunTaskCommand({
          cluster: info.cluster,
          taskDefinition: info.taskDefinition,
          launchType: 'FARGATE',
          count: 1,
          startedBy: 'cellctl-move',
          networkConfiguration: {
            awsvpcConfiguration: { subnets: [...info.subnets], securityGroups: [...info.securityGroups], assignPublicIp: 'DISABLED' },
          },
          overrides: {
            containerOverrides: [
              {
                name: info.container,
                environment: [
                  { name: 'MOVE_BUCKET', value: this.o.bucket },
                  { name: 'MOVE_BUCKET_REGION', value: this.o.bucketRegion },
                  { name: 'MOVE_REQUEST_KEY', value: requestKey },
                  { name: 'MOVE_RESULT_KEY', value: resultKey },
                ],
              },
            ],
          },
        }),
      );
    } catch (error) {
      this.starting.delete(starting);
      answered();
      throw new MoveError(
        `cell ${cell.id}: RunTask of ${info.taskDefinition} in ${info.cluster} (${cell.account}/${cell.region}) failed: ${(error as Error).name}: ${(error as Error).message}`,
      );
    }
    const task = started.tasks?.[0];
    if (task?.taskArn) this.running.set(task.taskArn, { cell, ecs, cluster: info.cluster, taskArn: task.taskArn, op: request.op });
    this.starting.delete(starting);
    answered();
    if (!task?.taskArn) {
      const why =
        (started.failures ?? []).map((f) => `${f.reason ?? '?'}${f.detail ? ` (${f.detail})` : ''}`).join('; ') || 'no task and no failure reported';
      throw new MoveError(`cell ${cell.id}: ECS did not start the mover task: ${why}; retry with \`cellctl move resume\``);
    }
    this.o.progress?.(`${cell.id}: mover task ${task.taskArn.split('/').pop()} (${request.op})`);
    const running = this.running.get(task.taskArn)!;
    try {
      return await this.watch(running, info, resultKey);
    } finally {
      this.running.delete(task.taskArn);
    }
  }

  private async watch(running: RunningTask, info: MoverTaskInfo, resultKey: string): Promise<unknown> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use: a command or task that does not need it never loads it
    const ecsApi = require('@aws-sdk/client-ecs') as typeof import('@aws-sdk/client-ecs');
    const { cell, ecs, taskArn } = running;
    const task = { taskArn };
    const deadline = this.o.clock.now().getTime() + (this.o.timeoutMs ?? 6 * 3600_000);
    let stopped;
    for (;;) {
      // Interrupted: stopAll stops this task (or, without it, this watch does), and the step ends here.
      if (this.o.signal?.aborted) {
        if (this.stopping) await this.stopping;
        else
          await ecs
            .send(new ecsApi.StopTaskCommand({ cluster: info.cluster, task: taskArn, reason: 'cellctl move was interrupted' }))
            .catch(() => undefined);
        throw this.interrupted();
      }
      const described = await ecs.send(new ecsApi.DescribeTasksCommand({ cluster: info.cluster, tasks: [task.taskArn] }));
      const current = described.tasks?.[0];
      if (current?.lastStatus === 'STOPPED') {
        stopped = current;
        break;
      }
      if (this.o.clock.now().getTime() > deadline) {
        await ecs
          .send(new ecsApi.StopTaskCommand({ cluster: info.cluster, task: task.taskArn, reason: 'cellctl move: the step timed out' }))
          .catch(() => undefined);
        throw new MoveError(
          `cell ${cell.id}: mover task ${task.taskArn} ran longer than ${Math.round((this.o.timeoutMs ?? 6 * 3600_000) / 60000)} min and was stopped; run \`cellctl move resume\` to repeat the step`,
        );
      }
      await this.pause(this.o.pollMs ?? 5000);
    }
    const container = stopped.containers?.find((c) => c.name === info.container);
    const exitCode = container?.exitCode;
    const result = await this.readResult(resultKey);
    if (result?.ok) return result.value;
    if (result && !result.ok) throw new MoveError(`cell ${cell.id}: ${result.error}`);
    const reason = [stopped.stoppedReason, container?.reason].filter(Boolean).join('; ');
    throw new MoveError(
      `cell ${cell.id}: mover task ${task.taskArn} stopped${exitCode === undefined ? '' : ` with exit code ${exitCode}`}${reason ? ` (${reason})` : ''} without a result; its log is in the cell's mover log group (stream mover/${info.container}/${task.taskArn.split('/').pop()}); fix the cause, then \`cellctl move resume\``,
    );
  }

  private async readResult(key: string): Promise<MoverResult | undefined> {
    try {
      const response = await this.o.s3.send(new GetObjectCommand({ Bucket: this.o.bucket, Key: key }));
      return JSON.parse(await response.Body!.transformToString()) as MoverResult;
    } catch (error) {
      if (statusOf(error) === 404 || (error as Error).name === 'NoSuchKey') return undefined;
      throw new MoveError(
        `reading the mover result s3://${this.o.bucket}/${key} failed: ${(error as Error).name} ${statusOf(error) ?? ''}: ${(error as Error).message}`,
      );
    }
  }
}
