import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import yazl from 'yazl';
import type { Cell } from './cells.ts';
import { addWorkbookParts, cellsXml, excelMaxRows, sheetStart } from './xlsx.ts';

/** Where a workbook's bytes go (a file handle): each write awaited before the next. */
export interface ByteSink {
  write(data: Uint8Array): Promise<unknown>;
}

/**
 * A workbook of one worksheet, written row by row by its caller (a match job's result): the rows are XML that
 * goes into the zip's deflate stream as it is written, and the zip's output goes to `out` as it comes, each
 * write awaited, so a batch of rows and a few compressed chunks are all that is held, whatever the row count.
 * Cells as the exports write them (`cellsXml`): text `inlineStr`, never a formula; numbers `n`.
 */
export class XlsxSheetWriter {
  private readonly zip = new yazl.ZipFile();
  private readonly sheet = new PassThrough();
  private readonly written: Promise<void>;
  private rowCount = 0;
  private bytes = 0;

  constructor(
    out: ByteSink,
    header: readonly Cell[],
    private readonly sheetName: string,
  ) {
    this.zip.addReadStream(this.sheet, 'xl/worksheets/sheet1.xml', { compressionLevel: 1 });
    this.written = (async () => {
      for await (const chunk of this.zip.outputStream as AsyncIterable<Buffer>) {
        await out.write(chunk);
        this.bytes += chunk.length;
      }
    })();
    // A failed write is thrown by the next `rows` or by `end`.
    this.written.catch(() => {});
    this.sheet.write(sheetStart(header));
  }

  /** Appends data rows (after the header and the rows before). */
  async rows(rows: ReadonlyArray<readonly Cell[]>): Promise<void> {
    if (this.rowCount + rows.length > excelMaxRows - 1) {
      throw new Error(`a worksheet holds at most ${excelMaxRows - 1} data rows`);
    }
    let xml = '';
    for (const cells of rows) {
      this.rowCount++;
      xml += `<row r="${this.rowCount + 1}">${cellsXml(cells)}</row>`;
    }
    if (!this.sheet.write(xml)) await Promise.race([once(this.sheet, 'drain'), this.written]);
  }

  /** Closes the sheet, adds the workbook's parts and waits until `out` has every byte; the workbook's size. */
  async end(): Promise<number> {
    this.sheet.end('</sheetData></worksheet>');
    addWorkbookParts(this.zip, 1, this.sheetName);
    this.zip.end();
    await this.written;
    return this.bytes;
  }

  /** Gives up the workbook (the job failed or stopped): its streams are released, `out` gets nothing more. */
  destroy(): void {
    this.sheet.destroy();
    (this.zip.outputStream as PassThrough).destroy();
  }
}
