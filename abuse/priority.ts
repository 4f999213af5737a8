// The attackers and the hostile backends run at a lower CPU priority (ABUSE_ATTACKER_NICE, 10
// by default; 0 leaves them as they are). In a deployment they are other machines; here they
// share two cores with the gateway, the worker, Redis and the victim, and their own bursts (row
// 1's attacker opens 1,000 connections at once) took the CPU the victim's calls were waiting
// for. They still get every cycle nobody else wants, so on an idle core the attacks' rates are
// unchanged; what they cost the gateway is what the rows measure.
import { setPriority } from 'node:os';

const NICE = Number(process.env.ABUSE_ATTACKER_NICE ?? 10);

export function asOtherMachine(pid: number | undefined): void {
  if (pid === undefined || NICE === 0) return;
  try {
    setPriority(pid, NICE);
  } catch {
    // Exited already, or not allowed: it runs at normal priority.
  }
}
