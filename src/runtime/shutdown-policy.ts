/**
 * How long past shutdownGraceMs a stopping process may take (ending streams, handing turns back,
 * closing connections) before it exits anyway. A platform's kill timeout
 * (terminationGracePeriodSeconds, stop_grace_period) should be at least shutdownGraceMs plus this.
 */
export const SHUTDOWN_MARGIN_MS = 20_000;
