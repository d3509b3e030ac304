import { handleStatus, type StatusDeps, type StatusRequest, type StatusResponse } from '../../src/status/handler.ts';

/** The status handler's answer with its body read whole (the merged metrics stream): for tests that read it. */
export async function answered(deps: StatusDeps, request: StatusRequest): Promise<StatusResponse & { body: string }> {
  const response = await handleStatus(deps, request);
  return { ...response, body: await bodyText(response.body) };
}

export async function bodyText(body: StatusResponse['body']): Promise<string> {
  if (typeof body === 'string') return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}
