/** Process entry of the `grpo` command (bin/grpo.js runs the built copy; `npm start` runs this via tsx). */
import { main } from './main.js';

await main(process.argv);
