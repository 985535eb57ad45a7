/** The part of fs-native-extensions (no types of its own) that data-dir-lock.ts uses. */
declare module 'fs-native-extensions' {
  /** An exclusive (or `shared`) lock on the open file `fd`; false when another holder has it. */
  export function tryLock(fd: number, opts?: { shared?: boolean }): boolean;
  const fsx: { tryLock: typeof tryLock };
  export default fsx;
}
