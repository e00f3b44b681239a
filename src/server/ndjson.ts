/**
 * NDJSON framing (§5.1): one compact JSON object per line, blank lines ignored, messages may
 * arrive split across reads or several per read. Shared by the inbound and outbound stdio transports.
 */

export class LineSplitter {
  private buffer = '';

  constructor(
    private readonly onLine: (line: string) => void,
    /** Lines longer than this are dropped (and reported) instead of growing memory without bound. */
    private readonly maxLineBytes = 64 * 1024 * 1024,
    private readonly onOversize?: () => void,
  ) {}

  push(chunk: string): void {
    let start = 0;
    let newline = chunk.indexOf('\n');
    if (newline === -1) {
      this.buffer += chunk;
      if (this.buffer.length > this.maxLineBytes) {
        this.buffer = '';
        this.onOversize?.();
      }
      return;
    }
    while (newline !== -1) {
      const piece = chunk.slice(start, newline);
      const line = this.buffer.length > 0 ? this.buffer + piece : piece;
      this.buffer = '';
      this.emit(line);
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
    }
    this.buffer = chunk.slice(start);
  }

  /** End of input: a final unterminated line still counts. */
  end(): void {
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
