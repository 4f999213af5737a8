// The JSON lines pino writes, kept in memory, for tests that assert what the gateway logged.
import { Writable } from 'node:stream';

export type LogLine = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A destination for createLogger and the lines written to it so far, parsed. */
export function captureLogLines(): { lines: LogLine[]; destination: Writable } {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { lines, destination };
}
