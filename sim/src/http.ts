/** A request as the simulated network carries it to the server, and the server's reply. */
export interface HttpRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: unknown;
}

export interface HttpReply {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: any;
}
