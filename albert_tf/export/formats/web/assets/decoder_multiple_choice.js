// Multiple choice in the browser, as `MultipleChoiceServing`
// (albert_tf/export/multiple_choice.py) answers: each choice packed with the
// context (steps/choices.py), a softmax over the question's choices.
import { argmax, columns, pack, softmax } from "./text.js";

// `multiple_choice.qa_texts`: the question and the choice, or (fill_blank)
// the question with every "_" replaced by the choice.
export function qaText(head, question, choice) {
  if (head.fill_blank && question.includes("_")) return question.split("_").join(choice);
  return question + " " + choice;
}

// One question's `{probabilities, choice_index, choice}`; "" choices are none.
export async function choose(head, rules, tokenizer, context, question, choices, run) {
  const length = head.max_seq_length, budget = length - 3;
  const contextIds = tokenizer.tokenize(rules.cut(String(context), length)).ids;
  const logits = [];
  for (const choice of choices) {
    if (!choice.length) { logits.push(-Infinity); continue; }
    const qa = rules.cut(qaText(head, String(question), choice), head.max_qa_length, "last");
    const qaIds = tokenizer.tokenize(qa).ids;
    const keep = Math.min(qaIds.length, head.max_qa_length, budget);
    const packed = pack(contextIds.slice(0, budget - keep), qaIds.slice(qaIds.length - keep),
      length, tokenizer.special);
    logits.push((await run(packed)).logits[0]);
  }
  const answered = logits.some((x) => x > -Infinity);
  if (!answered) return { probabilities: choices.map(() => 0), choice_index: -1, choice: "" };
  const best = argmax(logits);
  return { probabilities: softmax(logits), choice_index: best, choice: choices[best] };
}

export function answer(model, [context, question, choices]) {
  return choose(model.head, model.rules, model.tokenizer, context, question, choices, model.run);
}

// A batch: every question gets the batch's width of choices ("" for none), as
// the graph's `choices` input is one (batch, num_choices) tensor; the
// probabilities shown are as wide as the longest list given.
export async function predict(model, data) {
  const rows = data[2].map((c) => (Array.isArray(c) ? c.map(String) : [String(c)]));
  const width = Math.max(1, ...rows.map((c) => c.length));
  const wide = rows.map((c) => c.concat(new Array(width - c.length).fill("")));
  const answers = [];
  for (let r = 0; r < wide.length; r++) answers.push(await answer(model, [data[0][r], data[1][r], wide[r]]));
  const out = columns(answers);
  const given = Math.max(0, ...rows.map((c) => c.length));  // no column: none shown
  if (out.probabilities) out.probabilities = out.probabilities.map((p) => p.slice(0, given));
  return out;
}
