/** What the checker reads from the store once the run is over, through the API of a live server. */
export interface Snapshot {
  /** The whole journal, in order. */
  events: any[];
  /** Every task of the run's scope, by id. */
  tasks: Map<string, any>;
  budget: any;
  /** Every reservation of the budget, whatever its state. */
  reservations: any[];
  allowance: any;
}
