from athena_formation.server import main

main()
