from athena_cognition.server import main

main()
