// Invariant 9: a task records the adapter it started under; a worker running an adapter that
// is not compatible with it refuses to continue the task, with a reason, instead of drifting.
// Compatible means the same adapter name and the same semver major (for 0.x: the same minor,
// since 0.x minors are allowed to break).

function compatibilityLine(version: string): string {
  const [major = '0', minor = '0'] = version.split(/[.+-]/);
  return major === '0' ? `0.${minor}` : major;
}

/** Both arguments are "<name>@<version>". */
export function isCompatibleAdapter(recorded: string, running: string): boolean {
  const at = (value: string): [string, string] => {
    const index = value.lastIndexOf('@');
    return index <= 0 ? [value, ''] : [value.slice(0, index), value.slice(index + 1)];
  };
  const [recordedName, recordedVersion] = at(recorded);
  const [runningName, runningVersion] = at(running);
  return recordedName === runningName && compatibilityLine(recordedVersion) === compatibilityLine(runningVersion);
}
