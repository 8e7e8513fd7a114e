"""Small name lists that let the heuristic entity extractor tell a product from a place or a person.

They are deliberately short (common names only): anything not listed is still extracted, as "other".
"""

from __future__ import annotations

__all__ = ["AMBIGUOUS", "FIRST_NAMES", "NOT_NAMES", "ORGANIZATIONS", "ORG_SUFFIXES", "PLACES", "PRODUCTS", "TECH_TERMS"]

PRODUCTS: frozenset[str] = frozenset(
    """
docker kubernetes k8s helm python java javascript typescript node node.js nodejs deno react vue angular svelte
next.js django flask fastapi rails ruby php perl go golang rust kotlin swift scala haskell elixir c++ c# .net
postgres postgresql mysql mariadb sqlite mongodb redis milvus elasticsearch kafka rabbitmq nginx apache
linux ubuntu debian fedora centos windows macos ios android ipados iphone ipad macbook mac pixel galaxy
chrome firefox safari edge excel powerpoint outlook gmail slack zoom teams discord whatsapp telegram
github gitlab bitbucket git jira confluence notion trello figma photoshop vscode vim emacs intellij pycharm
pytorch tensorflow keras numpy pandas scikit-learn jupyter spark hadoop airflow terraform ansible jenkins
aws s3 ec2 lambda rds dynamodb cloudfront azure gcp bigquery firebase heroku vercel netlify cloudflare
chatgpt gpt-4 gpt-4o claude gemini llama copilot openai-python grpc protobuf graphql
spotify netflix youtube instagram facebook tiktok twitter kindle alexa siri playstation xbox nintendo
prius
""".split()
)

ORGANIZATIONS: frozenset[str] = frozenset(
    """
google microsoft apple amazon meta openai anthropic ibm intel nvidia amd oracle salesforce samsung sony
netflix uber lyft airbnb ikea walmart costco starbucks mcdonald's delta lufthansa ryanair easyjet
booking.com expedia fedex ups dhl usps irs ssa dmv fbi cia nasa nhs medicare medicaid unicef unesco
who un eu nato fifa nba nfl mlb bbc cnn visa mastercard paypal stripe chase citi hsbc barclays
""".split()
)

ORG_SUFFIXES: frozenset[str] = frozenset(
    """
inc inc. corp corp. corporation llc ltd ltd. gmbh plc company co co. university college school academy
institute bank agency administration department ministry association foundation society hospital clinic
group club center centre council committee office bureau airlines airways studio studios labs
""".split()
)

PLACES: frozenset[str] = frozenset(
    """
africa asia europe america antarctica australia oceania
usa us uk u.s. u.s.a. u.k. england scotland wales ireland france germany spain portugal italy greece netherlands belgium
switzerland austria sweden norway denmark finland iceland poland czechia hungary romania croatia turkey
russia ukraine israel egypt morocco kenya nigeria ghana ethiopia india pakistan bangladesh china japan korea
vietnam thailand indonesia malaysia singapore philippines canada mexico brazil argentina chile peru colombia
cuba jamaica
paris london berlin madrid barcelona lisbon rome milan venice florence naples athens amsterdam brussels
vienna prague budapest warsaw krakow copenhagen stockholm oslo helsinki dublin edinburgh zurich geneva
munich hamburg istanbul moscow kyiv cairo marrakech nairobi dubai tokyo kyoto osaka seoul beijing shanghai
taipei bangkok hanoi bali delhi mumbai bangalore sydney melbourne auckland toronto vancouver
montreal boston chicago seattle portland denver dallas houston miami atlanta orlando phoenix
nashville philadelphia detroit brooklyn manhattan california texas florida
hawaii alaska oregon colorado arizona nevada utah washington virginia georgia ohio michigan
""".split()
) | frozenset(
    {
        "new york",
        "hong kong",
        "las vegas",
        "los angeles",
        "san francisco",
        "san diego",
        "new zealand",
        "united states",
        "united kingdom",
        "south korea",
        "south africa",
        "new jersey",
        "new mexico",
        "north carolina",
        "south carolina",
        "rio de janeiro",
        "buenos aires",
        "mexico city",
        "cape town",
        "sri lanka",
        "costa rica",
        "puerto rico",
        "new orleans",
        "salt lake city",
        "tel aviv",
    }
)

FIRST_NAMES: frozenset[str] = frozenset(
    """
james john robert michael william david richard joseph thomas charles christopher daniel matthew anthony mark
donald steven paul andrew joshua kenneth kevin brian george timothy ronald edward jason jeffrey ryan jacob
gary nicholas eric jonathan stephen larry justin scott brandon benjamin samuel gregory alexander frank
patrick raymond jack dennis jerry tyler aaron jose adam nathan henry douglas zachary peter kyle noah ethan
jeremy walter christian keith roger terry austin sean gerald carl harold dylan arthur lawrence jordan jesse
bryan billy bruce gabriel joe logan alan juan albert willie elijah wayne randy vincent mason roy ralph bobby
russell bradley philip eugene liam lucas oliver leo max sam tom tim ben dan jon nate tim jim mike bob
mary patricia jennifer linda elizabeth barbara susan jessica sarah karen lisa nancy betty sandra margaret
ashley kimberly emily donna michelle carol amanda melissa deborah stephanie dorothy rebecca sharon laura
cynthia amy kathleen angela shirley brenda emma anna pamela nicole samantha katherine christine helen
debra rachel carolyn janet maria catherine heather diane olivia julie joyce victoria ruth virginia lauren
kelly christina joan evelyn judith andrea hannah megan cheryl jacqueline martha madison teresa gloria sara
janice ann kathryn abigail sophia frances jean alice judy isabella julia grace amber denise danielle
marilyn beverly charlotte natalie theresa diana brittany doris kayla alexis lori marie caroline melanie mel
gina joanna deb kate jen liz beth sue ava mia chloe zoe lily ella lucy ruby tina nina rosa carmen priya
raj ahmed ali fatima mohammed omar yuki hiro kenji wei li chen mei ana luis carlos diego sofia lucia pablo
""".split()
)

# Technical acronyms and words that are capitalized but name no particular thing.
TECH_TERMS: frozenset[str] = frozenset(
    """
api apis cpu cpus gpu gpus ram ssd hdd usb json xml yaml http https sql url urls pdf csv html css ssh dns tcp
udp ip vpn os ui ux faq id ids ai ml llm cli sdk ide tls ssl jwt oauth rest crud ci cd devops
""".split()
)

# Capitalized words that open or pepper sentences without naming anything.
NOT_NAMES: frozenset[str] = frozenset(
    """
i i'm i've i'd i'll ok okay lol lmao omg fyi asap btw tbh imo imho idk np tl;dr ps
mr mrs ms dr prof sir madam dear
mom dad mum grandma grandpa
yesterday today tomorrow tonight
unfortunately fortunately basically actually honestly hopefully finally first second third then next
also however yes no hey hi hello thanks thank sure great cool nice wow oh anyway
""".split()
)

# Known names that are also common English words: not taken as names when they open a sentence.
AMBIGUOUS: frozenset[str] = frozenset(
    """
go rust swift spark edge teams notion zoom slack pixel galaxy mac node react rails lambda helm deno
switch alexa chase target delta visa meta amazon apple orange jack mark will may grace bill pat
""".split()
)
