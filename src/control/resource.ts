// One control-plane resource as every process holds it (control-view.ts) and the admin API
// shows it: its kind and name, the version every change of it increments, whose it is, and
// its spec (what the kind takes: resource-kinds.ts).
import type { KindSpecs, ResourceKind } from './resource-kinds.ts';

export interface ControlResource<K extends ResourceKind = ResourceKind> {
  kind: K;
  name: string;
  /** 1 on creation, one more per change (a delete counts: a re-created resource goes on from there). */
  version: number;
  /** Whose it is ('' = the default tenant; issuers are the platform's and say ''). */
  tenant: string;
  spec: KindSpecs[K];
  /** ISO 8601 time of the last change, and who made it. */
  updatedAt: string;
  updatedBy: string;
}

/** What is stored in Redis for a resource (its version is kept beside it, by the write script). */
export type StoredResource = Omit<ControlResource, 'version'>;
