/** What the gate needs of a connection: node:net's Socket has all of it. */
export interface PipelinedSocket {
  readonly destroyed: boolean;
  pause(): unknown;
  resume(): unknown;
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
}

/** What the gate needs of an answer: node:http's ServerResponse has it ('close' once sent, or once its connection is gone). */
export interface PipelinedAnswer {
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Requests a client pipelines on one connection, waiting behind the one
 * being answered. Real scrapers and the kubelet send one request at a time;
 * a connection that queues more is an attack, and is closed.
 */
export const pipelineDepth = 16;

interface Lane {
  /** A request of this connection is being answered. */
  busy: boolean;
  /** The connection was paused for the ones waiting. */
  paused: boolean;
  waiting: (() => void)[];
}

/**
 * One request at a time per connection, as Go's server (Istio's) answers.
 * node:http parses every request a peer pipelines and hands each over at
 * once, so a thousand `GET /stats/prometheus` on one connection would make
 * a thousand scrapes at once (and a peer that never reads would pile their
 * answers up in the agent). Here a request starts only once the answer
 * before it on its connection has been sent; the ones behind it wait, not
 * started, and the connection stops being read meanwhile; when it closes,
 * they are dropped. More than `depth` waiting closes the connection.
 */
export class PipelineGate {
  readonly #lanes = new WeakMap<PipelinedSocket, Lane>();
  readonly #depth: number;

  constructor(depth = pipelineDepth) {
    this.#depth = depth;
  }

  /** Runs `start` for a request of `socket` once every earlier one is answered; `answer` closes when this one is. */
  enter(socket: PipelinedSocket, answer: PipelinedAnswer, start: () => void): void {
    const lane = this.#lanes.get(socket) ?? this.#open(socket);
    if (!lane.busy) return this.#run(socket, lane, answer, start);
    if (lane.waiting.length >= this.#depth) return socket.destroy();
    lane.waiting.push(() => this.#run(socket, lane, answer, start));
    lane.paused = true;
    socket.pause();
  }

  #open(socket: PipelinedSocket): Lane {
    const lane: Lane = { busy: false, paused: false, waiting: [] };
    socket.once('close', () => void (lane.waiting = []));
    this.#lanes.set(socket, lane);
    return lane;
  }

  #run(socket: PipelinedSocket, lane: Lane, answer: PipelinedAnswer, start: () => void): void {
    if (socket.destroyed) return;
    lane.busy = true;
    answer.once('close', () => {
      lane.busy = false;
      const next = lane.waiting.shift();
      if (lane.waiting.length === 0 && lane.paused && !socket.destroyed) {
        lane.paused = false;
        socket.resume();
      }
      next?.();
    });
    start();
  }
}
