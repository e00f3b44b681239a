/**
 * NDJSON framing (§5.1): one compact JSON object per line, blank lines ignored, messages may
 * arrive split across reads or several per read. Shared by the inbound and outbound stdio transports.
 */

export class LineSplitter {
  private buffer = '';
  /** After an oversized line: drop everything up to its end, so its tail is not read as a line. */
  private discarding = false;

  constructor(
    private readonly onLine: (line: string) => void,
    /** Lines longer than this are dropped (and reported) instead of growing memory without bound. */
    private readonly maxLineBytes = 64 * 1024 * 1024,
    private readonly onOversize?: () => void,
  ) {}

  push(chunk: string): void {
    let start = 0;
    let newline = chunk.indexOf('\n');
    while (newline !== -1) {
      if (this.discarding) {
        this.discarding = false;
      } else {
        const piece = chunk.slice(start, newline);
        const line = this.buffer.length > 0 ? this.buffer + piece : piece;
        if (line.length > this.maxLineBytes) this.onOversize?.();
        else this.emit(line);
      }
      this.buffer = '';
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
    }
    if (this.discarding) return;
    this.buffer += chunk.slice(start);
    if (this.buffer.length > this.maxLineBytes) {
      // Bounded memory: never buffer more than one line's worth.
      this.buffer = '';
      this.discarding = true;
      this.onOversize?.();
    }
  }

  /** End of input: a final unterminated line still counts. */
  end(): void {
    this.discarding = false;
    if (this.buffer.length > 0) {
      const line = this.buffer;
      this.buffer = '';
      this.emit(line);
    }
  }

  private emit(line: string): void {
    const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (trimmed.trim().length === 0) return; // §5.1: tolerate blank lines
    this.onLine(trimmed);
  }
}

/** Serialize one frame for the wire: compact JSON has no literal newline (§5.1). */
export function frameLine(message: unknown): string {
  return JSON.stringify(message) + '\n';
}
