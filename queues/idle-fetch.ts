// How long an idle BullMQ worker blocks on its queue's marker before it asks again. A job added
// (or a delayed job coming due, or a retry) writes the marker, which wakes the blocked worker at
// once: this bounds only the cost of an idle worker (one blocking wait and one fetch per
// interval), never the latency of new work. BullMQ's own default, 5 s, costs three workers of an
// idle process more than a Redis call a second; 30 s costs them one every five seconds.
// A blocking wait that a reconnect left hanging is abandoned by BullMQ's watchdog one second
// after this interval.
export const IDLE_DRAIN_DELAY_SECONDS = 30;
