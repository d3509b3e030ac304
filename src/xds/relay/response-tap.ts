import { GrpcFrameReader } from '../../grpc/grpc-frame.ts';
import type { LastKnownGoodRecorder } from '../last-known-good/recorder.ts';
import { responseReader, type ResponseFields, type XdsMode } from '../../discovery/wire.ts';

/**
 * Reads each response as it streams past: the scanner reads its fields, the
 * recorder holds its chunks for last-known-good; `onResponse` once its last
 * byte is through. Throws WireError at the first malformed byte.
 */
export function tapResponses(options: {
  mode: XdsMode;
  maxBytes: number;
  recorder: LastKnownGoodRecorder;
  onResponse(fields: ResponseFields, bytes: number): void;
}): GrpcFrameReader {
  const { mode, recorder } = options;
  let current: (ReturnType<typeof responseReader> & { length: number }) | undefined;
  return new GrpcFrameReader(
    {
      begin: (length) => {
        current = { ...responseReader(length, mode), length };
        recorder.begin(length);
      },
      data: (bytes) => {
        current!.scanner.push(bytes);
        recorder.data(bytes);
      },
      end: () => {
        current!.scanner.finish();
        recorder.end(current!.fields);
        options.onResponse(current!.fields, current!.length);
      },
    },
    options.maxBytes,
  );
}
