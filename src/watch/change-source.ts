/** Tells that something changed under the watched directories; what changed is read afterwards. */
export interface ChangeSource {
  /** Starts watching; resolves once events will be delivered. */
  start(onChange: (path: string) => void): Promise<void>;
  close(): Promise<void>;
}

/** A ChangeSource the test fires by hand. */
export class FakeChangeSource implements ChangeSource {
  #onChange: ((path: string) => void) | undefined;
  closed = false;

  start(onChange: (path: string) => void): Promise<void> {
    this.#onChange = onChange;
    return Promise.resolve();
  }

  emit(path = 'changed'): void {
    if (!this.closed) this.#onChange?.(path);
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}
