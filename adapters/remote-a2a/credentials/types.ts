// What every kind of outbound credential does to a request to the downstream agent.

/** The request about to be sent; `headers` may be changed in place. */
export interface OutgoingRequest {
  method: string;
  url: string;
  headers: Headers;
  /** The exact body text ('' when none): what a signature's content digest covers. */
  body: string;
}

export interface OutboundCredentials {
  /** Adds the credentials to one request (fresh per attempt: a signature's nonce must not repeat). */
  apply(request: OutgoingRequest): Promise<void>;
  /**
   * Called once when the downstream answered 401: refresh what can be refreshed (a new access
   * token, a re-read token file). True when sending the request again may now succeed.
   */
  renew(): Promise<boolean>;
}
