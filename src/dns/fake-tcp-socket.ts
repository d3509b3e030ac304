import { EventEmitter } from 'node:events';

/**
 * The part of a socket serveTcpConnection uses, for tests: it records what it
 * was told, and counts written bytes as unread (writableLength) because no
 * client reads them. `write` answers as a full buffer would (false) or not.
 */
export class FakeTcpSocket extends EventEmitter {
  paused = false;
  destroyed = false;
  writable = true;
  writableLength = 0;
  written: Buffer[] = [];
  readonly #writeFits: boolean;

  constructor(writeFits: boolean) {
    super();
    this.#writeFits = writeFits;
  }

  pause() {
    this.paused = true;
  }

  resume() {
    this.paused = false;
  }

  write(data: Buffer) {
    this.written.push(data);
    this.writableLength += data.length;
    return this.#writeFits;
  }

  destroy() {
    this.destroyed = true;
  }
}
