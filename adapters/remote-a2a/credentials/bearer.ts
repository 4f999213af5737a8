// A static bearer token from an environment variable or a file.
import type { Secret } from './secret.ts';
import type { OutboundCredentials, OutgoingRequest } from './types.ts';

export class BearerCredentials implements OutboundCredentials {
  constructor(private readonly token: Secret) {}

  async apply(request: OutgoingRequest): Promise<void> {
    request.headers.set('authorization', `Bearer ${this.token.current()}`);
  }

  /** A rotated token file (or a changed variable) is worth one more try. */
  async renew(): Promise<boolean> {
    return this.token.reload();
  }
}
