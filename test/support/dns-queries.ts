import * as dnsPacket from 'dns-packet';

/** A DNS message as TCP carries it: a 2-byte length, then the message. */
export const tcpFrame = (message: Buffer) => Buffer.concat([Buffer.from([message.length >> 8, message.length & 255]), message]);

/** 10,900 questions in 65,400 bytes, as the attack sent them: one name, then each question a pointer to it (6 bytes). */
export function manyQuestions(id: number): Buffer {
  const first = dnsPacket.encode({ id, type: 'query', questions: [{ name: 'db.legacy.internal', type: 'A' }] });
  const pointer = Buffer.from([0xc0, 12, 0, 1, 0, 1]);
  const message = Buffer.concat([first, ...Array.from({ length: 10_899 }, () => pointer)]);
  message.writeUInt16BE(10_900, 4);
  return message;
}
