/** What `/readyz` shows of the engine. */
export type EngineState =
  | { engine: 'sql' }
  | {
      engine: 'memory';
      status: 'building' | 'ready' | 'failed';
      version: number | null;
      places: number;
      tail: number;
      builtMs: number | null;
    };
