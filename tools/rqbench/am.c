int rqbench_placeholder_am;
