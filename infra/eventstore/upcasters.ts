/**
 * Upcasting: events are stored with the schemaVersion they were written with and never rewritten.
 * When a payload shape changes, the context registers a step from version n to n + 1; readers
 * always see the newest shape.
 */
export type Upcast = (data: Record<string, unknown>) => Record<string, unknown>;

export class UpcasterRegistry {
  private readonly steps = new Map<string, Map<number, Upcast>>();
  private readonly current = new Map<string, number>();

  /** declares that `type` is now written at `version`, reached from `version - 1` by `step` */
  register(type: string, version: number, step: Upcast): this {
    const steps = this.steps.get(type) ?? new Map<number, Upcast>();
    steps.set(version - 1, step);
    this.steps.set(type, steps);
    this.current.set(type, Math.max(version, this.current.get(type) ?? 1));
    return this;
  }

  /** the schemaVersion new events of this type are written with */
  versionOf(type: string): number {
    return this.current.get(type) ?? 1;
  }

  upcast(
    type: string,
    version: number,
    data: Record<string, unknown>,
  ): { version: number; data: Record<string, unknown> } {
    const steps = this.steps.get(type);
    let v = version;
    let d = data;
    while (steps?.has(v)) {
      d = steps.get(v)!(d);
      v += 1;
    }
    return { version: v, data: d };
  }
}
