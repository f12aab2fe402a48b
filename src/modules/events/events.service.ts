/** What other modules read of the event outbox. */
export { eventsOfIntake } from './events.repository.js';
