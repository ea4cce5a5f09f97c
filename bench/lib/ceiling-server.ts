/** The ceiling: a bare Fastify answering a fixed JSON body, nothing else. PORT from the environment. */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const body = { status: 'ok', service: 'leadatlas', version: 1 };
app.get('/', async () => body);
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
process.send?.('listening');
