/**
 * Plain-text tables for operator commands: left-aligned columns, two spaces apart, a header row.
 * Cells are single-line (newlines become spaces) so output stays greppable.
 */
export function renderTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const clean = (cell: string): string => cell.replace(/\s+/g, ' ').trim();
  const all = [header.map(clean), ...rows.map((row) => row.map(clean))];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  return (
    all
      .map((row) =>
        row
          .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
