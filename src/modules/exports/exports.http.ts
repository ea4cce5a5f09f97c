import type { FastifyReply } from 'fastify';
import { observeFlushedBody } from './delivery.ts';
import type { StartedExport } from './exports.service.ts';

/**
 * Sends an export as the response, for the API and the dashboard alike: the file's headers, the body
 * streamed, the body bytes flushed reported to the export (they decide its leads), and an idle timeout.
 *
 * A client that takes no byte for `idleTimeoutMs` is cut off: a stalled download would otherwise hold
 * its connection, its database reader and its place in the account's concurrent exports for as long as
 * it likes. A slow client that keeps taking bytes is never cut off.
 */
export function sendExport(reply: FastifyReply, started: StartedExport, idleTimeoutMs: number): FastifyReply {
  const res = reply.raw;
  observeFlushedBody(res, (bytes) => started.delivery.bodyFlushed(bytes));
  // The idle timeout is the socket's. A response without a network socket (a request injected in-process)
  // has no client that could stall, and light-my-request's stand-in would keep a timer alive after the end.
  if (typeof res.socket?.setTimeout === 'function') {
    res.setTimeout(idleTimeoutMs, () => {
      reply.log.info({ exportId: started.exportId, idleTimeoutMs }, 'export client took nothing for the idle timeout: cut off');
      res.destroy();
    });
  }
  // 'finish': every byte has been handed to the operating system.
  let complete = false;
  res.once('finish', () => (complete = true));
  res.once('close', () => {
    // The connection may serve further requests (keep-alive): the export's timeout was for the export only.
    if (typeof res.socket?.setTimeout === 'function') res.socket.setTimeout(0);
    started
      .finish(complete)
      .catch((err: unknown) => reply.log.error({ err, exportId: started.exportId }, 'recording the leads of an export failed'));
  });
  return reply
    .header('content-type', started.contentType)
    .header('content-disposition', started.contentDisposition)
    .header('cache-control', 'no-store')
    .header('x-export-id', started.exportId)
    .send(started.body);
}
