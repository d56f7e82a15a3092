"""The fixed sentence set of the quantisation quality gate.

Varied on purpose: short and long, questions and statements, science, code, numbers, several languages
and scripts, so a quantised graph that only works on easy English does not pass. Changing this list
changes what the gate measures: bump ``RECIPE_VERSION`` in :mod:`simone.providers.embeddings.quantize`.
"""

from __future__ import annotations

GATE_SENTENCES: tuple[str, ...] = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "A cheetah is running behind its prey.",
    "The cat sits outside in the sun.",
    "How do I reset my password if I no longer have access to my email?",
    "What are the opening hours of the pharmacy on Sundays?",
    "Where is the nearest train station?",
    "The price of the annual subscription went up by 12% in March.",
    "Invoice #4471 is due on 2024-07-01 and totals EUR 1,250.00.",
    "Vitamin D supplementation did not reduce the incidence of fractures in older adults.",
    "Microglia are the resident macrophages of the central nervous system.",
    "The p53 protein acts as a tumour suppressor by regulating the cell cycle.",
    "Antibiotic resistance spreads through horizontal gene transfer between bacteria.",
    "Randomised controlled trials are the gold standard for evaluating treatments.",
    "CRISPR-Cas9 allows targeted editing of the genome with high efficiency.",
    "The mitochondria is the powerhouse of the cell.",
    "Insulin resistance is a hallmark of type 2 diabetes.",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "SELECT name, COUNT(*) FROM orders GROUP BY name HAVING COUNT(*) > 10;",
    "git rebase --onto main feature~3 feature",
    "The function raises ValueError when the input list is empty.",
    "Use an async context manager to open the database connection.",
    "LanceDB stores vectors in the Lance columnar format on local disk or object storage.",
    "Reciprocal rank fusion adds one over sixty plus the rank for every list a document appears in.",
    "The quarterly report shows revenue growth driven by cloud services.",
    "Heavy rain is expected in the north of the country tomorrow afternoon.",
    "She played the violin at the concert last night and the audience loved it.",
    "The committee postponed the vote until the next session.",
    "Our team meets every Tuesday at 10 am to review the backlog.",
    "Please remember to water the plants while I am away.",
    "The bridge was closed for repairs after the storm damaged its supports.",
    "Quantum computers use qubits that can exist in superposition.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The Treaty of Westphalia ended the Thirty Years' War in 1648.",
    "Mount Everest is the highest mountain above sea level.",
    "O preço do bilhete de comboio aumentou este ano.",
    "¿Cuál es el horario de apertura de la biblioteca?",
    "Le musée est fermé le lundi et les jours fériés.",
    "Die Sitzung wurde auf nächste Woche verschoben.",
    "Il treno per Milano parte alle otto e mezza.",
    "Москва является столицей России.",
    "東京は日本の首都です。",
    "北京是中国的首都。",
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "ok",
    "",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.",
    (
        "Background: Chronic inflammation contributes to the development of many diseases. Methods: We "
        "followed 2,314 participants for ten years and measured C-reactive protein at baseline and every "
        "two years. Results: Higher levels were associated with an increased risk of cardiovascular "
        "events after adjustment for age, sex, smoking and body mass index. Conclusions: Inflammation "
        "markers may help identify people at risk who would benefit from early prevention."
    ),
    (
        "The document index splits files on their structure — headings, paragraphs, code blocks and "
        "lines — and sizes each chunk with the embedding model's own tokenizer, so that no chunk is "
        "longer than the window the model reads; a chunk that is too long would be silently truncated "
        "and its tail would never be found by a semantic search, only by the lexical one."
    ),
)
