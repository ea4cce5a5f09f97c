import { createSocket, type RemoteInfo } from 'node:dgram';
import dnsPacket, { type Answer, type DecodedPacket } from 'dns-packet';

export type DnsZone = Record<string, { A?: string[]; AAAA?: string[]; MX?: Array<{ exchange: string; priority: number }> }>;

const NXDOMAIN = 3;
const FORMERR = 1;

/**
 * A real DNS server on loopback (UDP, one authoritative zone), so that tests resolve real-looking site
 * names to loopback addresses through the same resolver the application uses in production. A name in
 * the zone answers its A, AAAA and MX records (no records of the asked type: an empty answer, i.e.
 * NODATA); a name not in the zone answers NXDOMAIN. Names match case-insensitively, without the final dot.
 */
export async function startDnsServer(zone: DnsZone): Promise<{ address: string; close(): Promise<void> }> {
  const records = new Map(Object.entries(zone).map(([name, entry]) => [normalise(name), entry]));
  const socket = createSocket('udp4');
  socket.on('message', (message: Buffer, remote: RemoteInfo) => {
    let query: DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const questions = query.questions ?? [];
    const answers: Answer[] = [];
    let rcode = 0;
    if (questions.length !== 1) rcode = FORMERR;
    for (const question of questions) {
      const entry = records.get(normalise(question.name));
      if (!entry) {
        rcode = NXDOMAIN;
        continue;
      }
      if (question.type === 'A') for (const data of entry.A ?? []) answers.push({ type: 'A', name: question.name, ttl: 60, data });
      if (question.type === 'AAAA') for (const data of entry.AAAA ?? []) answers.push({ type: 'AAAA', name: question.name, ttl: 60, data });
      if (question.type === 'MX')
        for (const mx of entry.MX ?? [])
          answers.push({ type: 'MX', name: question.name, ttl: 60, data: { exchange: mx.exchange, preference: mx.priority } });
    }
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id ?? 0,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | rcode,
      questions,
      answers,
    });
    socket.send(response, remote.port, remote.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      socket.off('error', reject);
      resolve();
    });
  });
  const { address, port } = socket.address();
  return {
    address: `${address}:${port}`,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function normalise(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}
