"""A tiny generated world of people and facts, for runs that need no downloads.

Every fact is a sentence about a person ("Mara lives in Lisbon."); premises,
contexts, hypotheses and questions are built from the facts, so that labels
and answer spans are known exactly. Deterministic in the seed.
"""

import dataclasses
import random

NAMES = ("Mara", "Tomas", "Ines", "Oskar", "Lena", "Rafael", "Nora", "Felix", "Ada", "Bruno",
         "Clara", "Dario", "Elsa", "Goran", "Hana", "Ivo", "Julia", "Karel", "Lucia", "Milo")
CITIES = ("Lisbon", "Oslo", "Porto", "Vienna", "Krakow", "Dublin", "Seville", "Turin", "Ghent",
          "Bergen", "Lyon", "Malmo")
JOBS = ("baker", "pilot", "doctor", "teacher", "painter", "farmer", "sailor", "tailor",
        "nurse", "chemist")
ANIMALS = ("cat", "dog", "horse", "parrot", "goat", "rabbit")
COLORS = ("red", "blue", "green", "yellow", "black", "white")

# relation -> (fact template, question, value pool)
RELATIONS = {
    "city": ("{name} lives in {value}.", "Where does {name} live?", CITIES),
    "job": ("{name} works as a {value}.", "What does {name} work as?", JOBS),
    "animal": ("{name} owns a {value}.", "Which animal does {name} own?", ANIMALS),
    "color": ("The favourite colour of {name} is {value}.",
              "What is the favourite colour of {name}?", COLORS),
}


@dataclasses.dataclass(frozen=True)
class Fact:
    name: str
    relation: str
    value: str

    @property
    def sentence(self):
        return RELATIONS[self.relation][0].format(name=self.name, value=self.value)

    @property
    def question(self):
        return RELATIONS[self.relation][1].format(name=self.name)


def random_fact(rng, name=None, relation=None):
    name = name or rng.choice(NAMES)
    relation = relation or rng.choice(sorted(RELATIONS))
    return Fact(name, relation, rng.choice(RELATIONS[relation][2]))


def paragraph(rng, num_people=3, facts_per_person=2):
    """A list of facts about `num_people` different people, shuffled."""
    facts = []
    for name in rng.sample(NAMES, num_people):
        for relation in rng.sample(sorted(RELATIONS), facts_per_person):
            facts.append(random_fact(rng, name, relation))
    rng.shuffle(facts)
    return facts


def negated(fact):
    """The sentence that denies `fact`."""
    verb = {"city": "does not live in", "job": "does not work as a",
            "animal": "does not own a"}.get(fact.relation)
    if verb:
        return f"{fact.name} {verb} {fact.value}."
    return f"The favourite colour of {fact.name} is not {fact.value}."


def entailment_pairs(seed, count):
    """(premise, hypothesis, entailed) triples.

    Entailed: the hypothesis is one of the premise's facts. Not entailed,
    alternately: the hypothesis denies one of them, or changes its value to
    one the premise never mentions.
    """
    rng = random.Random(seed)
    out = []
    for i in range(count):
        facts = paragraph(rng, num_people=2, facts_per_person=2)
        fact = rng.choice(facts)
        if i % 2 == 0:
            hypothesis = fact.sentence
        elif i % 4 == 1:
            hypothesis = negated(fact)
        else:
            mentioned = {f.value for f in facts}
            others = [v for v in RELATIONS[fact.relation][2] if v not in mentioned]
            hypothesis = Fact(fact.name, fact.relation, rng.choice(others)).sentence
        out.append((" ".join(f.sentence for f in facts), hypothesis, i % 2 == 0))
    return out


def qa_paragraphs(seed, count, questions_per_paragraph=2, unanswerable_share=0.0):
    """`count` (context, questions) pairs; each question is
    (text, answer or None, answer's character start or -1).

    A context states three of the four relations, each once, about two or
    three people. Unanswerable questions ask for the relation it leaves out.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        names = rng.sample(NAMES, rng.choice((2, 3)))
        relations = rng.sample(sorted(RELATIONS), 3)
        facts = [random_fact(rng, rng.choice(names), r) for r in relations]
        context = " ".join(f.sentence for f in facts)
        missing = (set(RELATIONS) - set(relations)).pop()
        questions = []
        for fact in rng.sample(facts, questions_per_paragraph):
            if rng.random() < unanswerable_share:
                questions.append((Fact(fact.name, missing, "").question, None, -1))
                continue
            template = RELATIONS[fact.relation][0]
            offset = len(template.split("{value}")[0].format(name=fact.name))
            start = context.index(fact.sentence) + offset
            questions.append((fact.question, fact.value, start))
        out.append((context, questions))
    return out
