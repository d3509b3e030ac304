/**
 * Envoy's side of one ADS call, as the relay core sees it (Istio's
 * `adsStream`: receive, send, finish and the call's context). The relay
 * serves it over HTTP/2 (`http2-ads-stream.ts`); the unit tests use an
 * in-memory one (`FakeAdsStream`).
 */
export interface AdsStream {
  /** Aborted once the call is gone: Envoy reset it, or it was finished and closed. */
  readonly signal: AbortSignal;
  /** Envoy's bytes as they arrive (gRPC frames cut anywhere); `ended` when Envoy half-closes its side. */
  receive(sink: AdsSink): void;
  /** Sends the response headers: messages may follow. Nothing when the call is gone. */
  open(): void;
  /** Bytes for Envoy; false when its buffer is full: wait for `drained` before sending on. */
  send(bytes: Buffer): boolean;
  /** Calls `then` once, when Envoy has taken what is buffered. */
  drained(then: () => void): void;
  /** Stops reading Envoy's bytes (back-pressure towards Envoy) … */
  pause(): void;
  /** … and reads them again. */
  resume(): void;
  /** Ends the call with a gRPC status after what was sent; Envoy's later bytes are read and dropped. Nothing when the call is gone. */
  finish(status: number, details: string): void;
}

export interface AdsSink {
  data(chunk: Buffer): void;
  ended(): void;
}
