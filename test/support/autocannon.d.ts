declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    timeout?: number;
    reconnectRate?: number;
    servername?: string;
  }
  interface Result {
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    totalRequests: number;
    totalCompletedRequests: number;
    '2xx': number;
  }
  interface Instance extends PromiseLike<Result> {
    stop(): void;
    /** Each answer as it comes. */
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this;
  }
  export default function autocannon(options: Options): Instance & Promise<Result>;
}
